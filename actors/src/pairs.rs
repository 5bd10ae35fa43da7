//! Indexes kept as one ordered set of pairs (`BTreeSet<(A, B)>`) instead of a map from `A` to
//! a set of `B`: most keys have one or a few entries, and a set per key costs a whole B-tree
//! leaf. One helper reads the entries under a key, for every such index.

use std::collections::BTreeSet;

/// The second parts of the pairs of `set` whose first part is `first`, in order. `least` is
/// the smallest value of `B` (a nil id), where the range starts.
pub(crate) fn under<'a, A: Ord + Clone + 'a, B: Ord + 'a>(
    set: &'a BTreeSet<(A, B)>,
    first: A,
    least: B,
) -> impl Iterator<Item = &'a B> + 'a {
    let key = first.clone();
    set.range((first, least)..).take_while(move |(a, _)| *a == key).map(|(_, b)| b)
}
