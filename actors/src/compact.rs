//! Ordered maps and sets sized for the few entries most of them hold.
//!
//! A `BTreeMap` allocates a whole leaf (eleven slots) for its first entry: a process's
//! namespace holding one name cost some 450 bytes, its one root some 200, in every copy of its
//! object memory. [`CompactMap`] and [`CompactSet`] keep up to [`FEW`] entries in one sorted
//! vector sized to what it holds, and move to a B-tree past that, so that a small collection
//! costs little and a large one still inserts in O(log n). Both iterate in key order, like the
//! B-tree collections they replace, and compare equal by their entries whatever their form.

use std::borrow::Borrow;
use std::collections::{BTreeMap, btree_map};
use std::fmt;

/// The most entries kept in a vector; one more moves the collection to a B-tree.
pub const FEW: usize = 16;

/// An ordered map: a sorted vector while it holds at most [`FEW`] entries, a B-tree after.
#[derive(Clone)]
pub struct CompactMap<K, V>(Repr<K, V>);

#[derive(Clone)]
enum Repr<K, V> {
    Few(Vec<(K, V)>),
    Many(BTreeMap<K, V>),
}

impl<K, V> Default for CompactMap<K, V> {
    fn default() -> Self {
        CompactMap(Repr::Few(Vec::new()))
    }
}

impl<K: Ord, V> CompactMap<K, V> {
    /// An empty map; allocates nothing.
    pub const fn new() -> Self {
        CompactMap(Repr::Few(Vec::new()))
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Few(v) => v.len(),
            Repr::Many(m) => m.len(),
        }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn position<Q>(entries: &[(K, V)], key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// The value under `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match &self.0 {
            Repr::Few(v) => Self::position(v, key).ok().map(|i| &v[i].1),
            Repr::Many(m) => m.get(key),
        }
    }

    /// Whether it holds `key`.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.get(key).is_some()
    }

    /// Puts `value` under `key`; returns the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match &mut self.0 {
            Repr::Few(v) => match Self::position(v, &key) {
                Ok(i) => Some(std::mem::replace(&mut v[i].1, value)),
                Err(i) if v.len() < FEW => {
                    // Exactly what it holds: most of these never grow past one or two.
                    v.reserve_exact(1);
                    v.insert(i, (key, value));
                    None
                }
                Err(_) => {
                    let mut many: BTreeMap<K, V> = std::mem::take(v).into_iter().collect();
                    many.insert(key, value);
                    self.0 = Repr::Many(many);
                    None
                }
            },
            Repr::Many(m) => m.insert(key, value),
        }
    }

    /// Takes `key` out; returns its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match &mut self.0 {
            Repr::Few(v) => Self::position(v, key).ok().map(|i| v.remove(i).1),
            Repr::Many(m) => m.remove(key),
        }
    }

    /// Empties it and frees what it held.
    pub fn clear(&mut self) {
        self.0 = Repr::Few(Vec::new());
    }

    /// Keeps only the entries `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        match &mut self.0 {
            Repr::Few(v) => v.retain_mut(|(k, value)| keep(k, value)),
            Repr::Many(m) => m.retain(|k, value| keep(k, value)),
        }
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        match &self.0 {
            Repr::Few(v) => Iter(IterRepr::Few(v.iter())),
            Repr::Many(m) => Iter(IterRepr::Many(m.iter())),
        }
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.iter().map(|(_, v)| v)
    }

    /// The first entry in key order.
    pub fn first_key_value(&self) -> Option<(&K, &V)> {
        self.iter().next()
    }
}

/// The entries of a [`CompactMap`] in key order.
pub struct Iter<'a, K, V>(IterRepr<'a, K, V>);

enum IterRepr<'a, K, V> {
    Few(std::slice::Iter<'a, (K, V)>),
    Many(btree_map::Iter<'a, K, V>),
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Few(i) => i.next().map(|(k, v)| (k, v)),
            IterRepr::Many(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Few(i) => i.size_hint(),
            IterRepr::Many(i) => i.size_hint(),
        }
    }
}

impl<K, V> DoubleEndedIterator for Iter<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Few(i) => i.next_back().map(|(k, v)| (k, v)),
            IterRepr::Many(i) => i.next_back(),
        }
    }
}

impl<K, V> ExactSizeIterator for Iter<'_, K, V> {}

impl<'a, K: Ord, V> IntoIterator for &'a CompactMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<K: Ord, V> Extend<(K, V)> for CompactMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, entries: I) {
        for (k, v) in entries {
            self.insert(k, v);
        }
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for CompactMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = CompactMap::new();
        map.extend(entries);
        map
    }
}

impl<K: Ord, V: PartialEq> PartialEq for CompactMap<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<K: Ord, V: Eq> Eq for CompactMap<K, V> {}

impl<K: Ord + fmt::Debug, V: fmt::Debug> fmt::Debug for CompactMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// An ordered set: a sorted vector while it holds at most [`FEW`] entries, a B-tree after.
#[derive(Clone)]
pub struct CompactSet<T>(CompactMap<T, ()>);

impl<T> Default for CompactSet<T> {
    fn default() -> Self {
        CompactSet(CompactMap::default())
    }
}

impl<T: Ord> PartialEq for CompactSet<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<T: Ord> Eq for CompactSet<T> {}

impl<T: Ord> CompactSet<T> {
    /// An empty set; allocates nothing.
    pub const fn new() -> Self {
        CompactSet(CompactMap::new())
    }

    /// How many it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether it holds `value`.
    pub fn contains<Q>(&self, value: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.contains_key(value)
    }

    /// Adds `value`; false if it was there already.
    pub fn insert(&mut self, value: T) -> bool {
        self.0.insert(value, ()).is_none()
    }

    /// Takes `value` out; false if it was not there.
    pub fn remove<Q>(&mut self, value: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.remove(value).is_some()
    }

    /// Keeps only what `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.0.retain(|value, ()| keep(value));
    }

    /// The smallest.
    pub fn first(&self) -> Option<&T> {
        self.0.first_key_value().map(|(value, ())| value)
    }

    /// Everything, in order.
    pub fn iter(&self) -> SetIter<'_, T> {
        SetIter(self.0.iter())
    }
}

/// The members of a [`CompactSet`] in order.
pub struct SetIter<'a, T>(Iter<'a, T, ()>);

impl<'a, T> Iterator for SetIter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        self.0.next().map(|(value, ())| value)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<T> DoubleEndedIterator for SetIter<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(value, ())| value)
    }
}

impl<T> ExactSizeIterator for SetIter<'_, T> {}

impl<'a, T: Ord> IntoIterator for &'a CompactSet<T> {
    type Item = &'a T;
    type IntoIter = SetIter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Ord> Extend<T> for CompactSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, values: I) {
        for value in values {
            self.insert(value);
        }
    }
}

impl<T: Ord> FromIterator<T> for CompactSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(values: I) -> Self {
        let mut set = CompactSet::new();
        set.extend(values);
        set
    }
}

impl<T: Ord, const N: usize> From<[T; N]> for CompactSet<T> {
    fn from(values: [T; N]) -> Self {
        values.into_iter().collect()
    }
}

impl<T: Ord + fmt::Debug> fmt::Debug for CompactSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}
