//! The surface's node list, with every operation the rules need in logarithmic time.
//!
//! A replacement puts its event where the replaced range began and removes the rest of the
//! range, and the nodes are not sorted by seq (a replacement's seq is the newest), so a plain
//! list would cost a scan to find a seq and a shift to remove a range: opening a log of n
//! appends and n replacements was quadratic (32 s at 200k of each). Here removed nodes leave
//! a vacant slot, a Fenwick tree counts the live slots before any slot (a node's index), and
//! a map finds a seq's slot. Vacant slots are squeezed out once they outnumber the live ones,
//! so walking the nodes stays linear in their number.

use std::collections::HashMap;

/// A slot whose node was removed.
const VACANT: u64 = u64::MAX;

/// The ordered nodes of a surface.
#[derive(Debug, Clone, Default)]
pub(super) struct Nodes {
    /// Seqs in surface order, with [`VACANT`] where a node was removed.
    slots: Vec<u64>,
    /// 1 per live slot.
    live: Fenwick,
    /// The slot of each live seq.
    slot_of: HashMap<u64, usize>,
}

impl Nodes {
    /// The number of nodes.
    pub(super) fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// The nodes in surface order.
    pub(super) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots.iter().copied().filter(|&seq| seq != VACANT)
    }

    /// The node at `index`.
    pub(super) fn get(&self, index: usize) -> Option<u64> {
        (index < self.len()).then(|| self.slots[self.live.find(index)])
    }

    /// The index of node `seq`, if it is on the surface.
    pub(super) fn index_of(&self, seq: u64) -> Option<usize> {
        let slot = *self.slot_of.get(&seq)?;
        Some(self.live.prefix(slot))
    }

    /// Append `seq`.
    pub(super) fn push(&mut self, seq: u64) {
        self.slot_of.insert(seq, self.slots.len());
        self.slots.push(seq);
        self.live.push(1);
    }

    /// Replace the nodes at indices `start..=end` (valid, `start <= end`) by `seq`.
    pub(super) fn replace(&mut self, start: usize, end: usize, seq: u64) {
        let first = self.live.find(start);
        // The slots of the rest of the range, found before any of them is vacated.
        let rest: Vec<usize> = (start + 1..=end).map(|i| self.live.find(i)).collect();
        self.slot_of.remove(&self.slots[first]);
        self.slots[first] = seq;
        self.slot_of.insert(seq, first);
        for slot in rest {
            self.slot_of.remove(&self.slots[slot]);
            self.slots[slot] = VACANT;
            self.live.add(slot, -1);
        }
        if self.slots.len() > 2 * self.len() + 16 {
            self.compact();
        }
    }

    /// Drop the vacant slots.
    fn compact(&mut self) {
        let nodes: Vec<u64> = self.iter().collect();
        *self = Self::default();
        for seq in nodes {
            self.push(seq);
        }
    }
}

impl PartialEq for Nodes {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Nodes {}

/// A Fenwick (binary indexed) tree of counts that can grow at the end.
#[derive(Debug, Clone, Default)]
struct Fenwick {
    /// 1-based: `tree[i - 1]` holds the sum of the `i & i.wrapping_neg()` counts ending at i.
    tree: Vec<i64>,
}

impl Fenwick {
    /// The sum of the first `n` counts.
    fn prefix(&self, n: usize) -> usize {
        let mut sum = 0i64;
        let mut i = n;
        while i > 0 {
            sum += self.tree[i - 1];
            i &= i - 1;
        }
        usize::try_from(sum).unwrap_or(0)
    }

    /// Add `delta` to count `index` (0-based).
    fn add(&mut self, index: usize, delta: i64) {
        let mut i = index + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Append a count.
    fn push(&mut self, count: i64) {
        let i = self.tree.len() + 1;
        let low = i & i.wrapping_neg();
        // Node i covers counts i-low+1..=i: the new one plus those already present.
        let covered = self.prefix(i - 1) - self.prefix(i - low);
        self.tree.push(count + covered as i64);
    }

    /// The 0-based index of the count that brings the prefix sum past `k` (the slot of the
    /// `k`-th live node, 0-based), for `k` below the total.
    fn find(&self, k: usize) -> usize {
        let mut position = 0usize;
        let mut remaining = k as i64;
        let mut step = self.tree.len().checked_next_power_of_two().unwrap_or(0);
        if step > self.tree.len() {
            step /= 2;
        }
        while step > 0 {
            let next = position + step;
            if next <= self.tree.len() && self.tree[next - 1] <= remaining {
                position = next;
                remaining -= self.tree[next - 1];
            }
            step /= 2;
        }
        position
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain list the structure must agree with.
    fn model_replace(nodes: &mut Vec<u64>, start: usize, end: usize, seq: u64) {
        nodes.splice(start..=end, [seq]);
    }

    #[test]
    fn agrees_with_a_plain_list() {
        let mut nodes = Nodes::default();
        let mut model = Vec::new();
        // A fixed pseudo-random walk: appends, single and range replacements.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for seq in 0..5_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if model.is_empty() || x.is_multiple_of(3) {
                nodes.push(seq);
                model.push(seq);
            } else {
                let start = (x >> 8) as usize % model.len();
                let span = ((x >> 32) as usize % 4).min(model.len() - 1 - start);
                nodes.replace(start, start + span, seq);
                model_replace(&mut model, start, start + span, seq);
            }
            assert_eq!(nodes.len(), model.len());
        }
        assert!(nodes.iter().eq(model.iter().copied()));
        for (i, &s) in model.iter().enumerate() {
            assert_eq!(nodes.index_of(s), Some(i));
            assert_eq!(nodes.get(i), Some(s));
        }
        assert_eq!(nodes.get(model.len()), None);
        assert_eq!(nodes.index_of(VACANT - 1), None);
    }
}
