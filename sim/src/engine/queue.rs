//! The pending-event set: a monotone radix heap on time, first-in first-out among equal times.
//!
//! Events pop in (time, sequence) order, the sequence number given at scheduling. Times popped
//! never decrease (the engine refuses to schedule into the past), as a radix heap needs. Times
//! are read as 16 hexadecimal digits; an entry sits in the bucket named by the highest digit where
//! its time differs from the last time taken and by its value there (15 x 16 buckets), so it only
//! moves down; events at exactly the last time wait in a FIFO of their own. A bucket receives
//! redistributed entries only while empty, and redistribution keeps their order, so ties cost
//! nothing: a push is O(1), and an entry moves at most once per digit before it pops.
//!
//! Payloads travel inside the entries. Cancelling sets the event's bit in a bitmap over sequence
//! numbers (spanning the oldest cancelled event not yet surfaced to the newest cancel); the entry
//! is dropped when it surfaces. A handle is pending if its (time, sequence) follows the last pop,
//! so cancelling what already happened is a no-op. Memory per pending event:
//! [`EventQueue::bytes_per_pending_event`] (16 bytes of time and sequence plus the payload).

use super::time::SimTime;
use std::collections::VecDeque;

/// Handle to a scheduled event, used to cancel it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventId {
    time: u64,
    seq: u64,
}

struct Entry<E> {
    time: u64,
    seq: u64,
    event: E,
}

/// Bits per digit of the radix.
const DIGIT_BITS: u32 = 4;
/// Buckets indexed by `position * 16 + digit` (digit 0 is never used: the differing digit is
/// always larger than the last time's).
const BUCKETS: usize = 256;

/// Events waiting to happen, ordered by (time, sequence).
pub struct EventQueue<E> {
    /// Bucket 0: the entries at time `last`, in sequence order.
    current: VecDeque<Entry<E>>,
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit `i` set when `buckets[i]` may hold entries.
    nonempty: [u64; BUCKETS / 64],
    /// The time whose bits name the buckets: the time of the last entry taken from bucket 0.
    last: u64,
    /// (time, sequence) of the last live event popped: everything at or before it has happened.
    clock: (u64, u64),
    popped_any: bool,
    cancelled: CancelledSet,
    next_seq: u64,
    live: usize,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            current: VecDeque::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            nonempty: [0; BUCKETS / 64],
            last: 0,
            clock: (0, 0),
            popped_any: false,
            cancelled: CancelledSet::default(),
            next_seq: 0,
            live: 0,
        }
    }

    /// Number of live (scheduled and not cancelled) events.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Bytes held per live event, for the figures in BENCHMARKS.md.
    pub const fn bytes_per_pending_event() -> usize {
        std::mem::size_of::<Entry<E>>()
    }

    /// Schedules `event` at `time`. The caller guarantees that `time` is not before the time of the
    /// last event popped.
    pub fn push(&mut self, time: SimTime, event: E) -> EventId {
        let time = time.as_ps();
        debug_assert!(time >= self.clock.0, "push into the past");
        let seq = self.next_seq;
        self.next_seq += 1;
        self.insert(Entry { time, seq, event });
        self.live += 1;
        EventId { time, seq }
    }

    /// Whether the event behind `id` is still to happen (not popped, not cancelled).
    pub fn is_pending(&self, id: EventId) -> bool {
        let happened = self.popped_any && (id.time, id.seq) <= self.clock;
        !happened && id.seq < self.next_seq && !self.cancelled.contains(id.seq)
    }

    /// Cancels a pending event; returns false when it already happened or was cancelled.
    pub fn cancel(&mut self, id: EventId) -> bool {
        if !self.is_pending(id) {
            return false;
        }
        self.cancelled.insert(id.seq);
        self.live -= 1;
        true
    }

    /// Time of the next live event, without removing it. The heap is left as it is, so events may
    /// still be pushed anywhere at or after the last popped time. It scans the lowest non-empty
    /// bucket: cheap enough for run limits, not meant for every event.
    pub fn peek_time(&self) -> Option<SimTime> {
        let live = |e: &&Entry<E>| !self.cancelled.contains(e.seq);
        if self.current.iter().any(|e| live(&e)) {
            return Some(SimTime::from_ps(self.last));
        }
        for b in (0..BUCKETS).filter(|&b| self.nonempty[b / 64] >> (b % 64) & 1 == 1) {
            if let Some(t) = self.buckets[b].iter().filter(live).map(|e| e.time).min() {
                return Some(SimTime::from_ps(t));
            }
        }
        None
    }

    /// Removes and returns the next live event.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        loop {
            if let Some(entry) = self.current.pop_front() {
                if self.cancelled.remove(entry.seq) {
                    continue;
                }
                self.live -= 1;
                self.clock = (entry.time, entry.seq);
                self.popped_any = true;
                return Some((SimTime::from_ps(entry.time), entry.event));
            }
            if !self.refill() {
                // Only cancelled entries were left, and `last` may have run ahead of the clock on
                // them: bring it back so pushes at the clock stay in order.
                self.last = self.clock.0;
                return None;
            }
        }
    }

    fn insert(&mut self, entry: Entry<E>) {
        let diff = entry.time ^ self.last;
        if diff == 0 {
            self.current.push_back(entry);
            return;
        }
        let position = (63 - diff.leading_zeros()) / DIGIT_BITS;
        let digit = (entry.time >> (position * DIGIT_BITS)) & 15;
        let b = (position * 16) as usize + digit as usize;
        self.buckets[b].push(entry);
        self.nonempty[b / 64] |= 1 << (b % 64);
    }

    fn lowest_nonempty(&self) -> Option<usize> {
        self.nonempty
            .iter()
            .position(|&w| w != 0)
            .map(|i| i * 64 + self.nonempty[i].trailing_zeros() as usize)
    }

    /// Bucket 0 is exhausted: advance `last` to the smallest time of the lowest non-empty bucket and
    /// move its entries down. Cancelled entries travel along and are dropped when they reach bucket
    /// 0. Returns false when the queue holds no entry at all.
    fn refill(&mut self) -> bool {
        let Some(b) = self.lowest_nonempty() else {
            return false;
        };
        self.nonempty[b / 64] &= !(1 << (b % 64));
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.last = moving
            .iter()
            .map(|e| e.time)
            .min()
            .expect("marked bucket holds entries");
        for entry in moving.drain(..) {
            self.insert(entry);
        }
        // Hand the emptied allocation back so the bucket keeps its capacity.
        self.buckets[b] = moving;
        true
    }
}

/// Sequence numbers of cancelled events whose entries have not surfaced yet: a bitmap over a window
/// of sequence numbers, trimmed from the front as they surface.
#[derive(Default)]
struct CancelledSet {
    words: VecDeque<u64>,
    /// Sequence number of bit 0 of `words[0]`, divided by 64.
    base: u64,
    count: usize,
}

impl CancelledSet {
    fn contains(&self, seq: u64) -> bool {
        let word = seq / 64;
        word >= self.base
            && self
                .words
                .get((word - self.base) as usize)
                .is_some_and(|w| w >> (seq % 64) & 1 == 1)
    }

    fn insert(&mut self, seq: u64) {
        let word = seq / 64;
        if self.count == 0 {
            self.words.clear();
            self.base = word;
        }
        if word < self.base {
            for _ in word..self.base {
                self.words.push_front(0);
            }
            self.base = word;
        }
        let index = (word - self.base) as usize;
        if index >= self.words.len() {
            self.words.resize(index + 1, 0);
        }
        self.words[index] |= 1 << (seq % 64);
        self.count += 1;
    }

    /// Clears `seq` and says whether it was set.
    fn remove(&mut self, seq: u64) -> bool {
        if self.count == 0 || !self.contains(seq) {
            return false;
        }
        self.words[(seq / 64 - self.base) as usize] &= !(1 << (seq % 64));
        self.count -= 1;
        while self.words.front() == Some(&0) {
            self.words.pop_front();
            self.base += 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng, rngs::ChaCha8Rng};

    #[test]
    fn equal_times_pop_first_in_first_out() {
        let mut q = EventQueue::new();
        let t = SimTime::from_ns(5);
        for i in 0..100 {
            q.push(t, i);
        }
        q.push(SimTime::from_ns(1), -1);
        assert_eq!(q.pop(), Some((SimTime::from_ns(1), -1)));
        for i in 0..100 {
            assert_eq!(q.pop(), Some((t, i)));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn cancelled_events_never_pop_and_stale_handles_do_nothing() {
        let mut q = EventQueue::new();
        let a = q.push(SimTime::from_ns(1), 'a');
        let b = q.push(SimTime::from_ns(2), 'b');
        assert!(q.cancel(a));
        assert!(!q.cancel(a), "second cancel is a no-op");
        assert_eq!(q.len(), 1);
        // The freed slot is reused; the old handle must not cancel the new event.
        let c = q.push(SimTime::from_ns(3), 'c');
        assert!(!q.cancel(a));
        assert_eq!(q.pop(), Some((SimTime::from_ns(2), 'b')));
        assert!(!q.cancel(b), "cannot cancel what already happened");
        assert_eq!(q.peek_time(), Some(SimTime::from_ns(3)));
        assert!(q.cancel(c));
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    /// Against a sorted reference on a random mix of pushes, cancels and pops, with many ties.
    #[test]
    fn matches_a_sorted_reference() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64, EventId)> = Vec::new();
        let mut now = 0u64;
        let mut label = 0u64;
        for _ in 0..50_000 {
            match rng.random_range(0..10) {
                0..=4 => {
                    let t = now + rng.random_range(0..8u64) * 1000;
                    let id = q.push(SimTime::from_ps(t), label);
                    reference.push((t, label, id));
                    label += 1;
                }
                5 if !reference.is_empty() => {
                    let i = rng.random_range(0..reference.len());
                    let (_, _, id) = reference.swap_remove(i);
                    assert!(q.cancel(id));
                }
                _ => {
                    reference.sort_by_key(|&(t, l, _)| (t, l));
                    let expected = (!reference.is_empty()).then(|| reference.remove(0));
                    let got = q.pop();
                    assert_eq!(
                        got.map(|(t, l)| (t.as_ps(), l)),
                        expected.map(|(t, l, _)| (t, l))
                    );
                    if let Some((t, _)) = got {
                        assert!(t.as_ps() >= now, "time went backwards");
                        now = t.as_ps();
                    }
                }
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    #[test]
    fn memory_per_pending_event_is_small() {
        assert_eq!(EventQueue::<u64>::bytes_per_pending_event(), 24);
        assert_eq!(EventQueue::<(u32, u32)>::bytes_per_pending_event(), 24);
    }
}
