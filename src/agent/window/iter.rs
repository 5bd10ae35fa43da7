//! `Iter`: a window's items in order.

use std::iter::FusedIterator;

/// The items of a [`Window`](super::Window), oldest first. Made by
/// [`Window::iter`](super::Window::iter) in O(chunks); each step is O(1).
pub struct Iter<'a, M> {
    /// The chunks' item slices and then the tail, newest last; consumed from the front.
    slices: std::vec::IntoIter<&'a [M]>,
    current: std::slice::Iter<'a, M>,
    remaining: usize,
}

impl<'a, M> Iter<'a, M> {
    pub(super) fn new(slices: Vec<&'a [M]>, len: usize) -> Iter<'a, M> {
        debug_assert_eq!(slices.iter().map(|s| s.len()).sum::<usize>(), len);
        Iter { slices: slices.into_iter(), current: [].iter(), remaining: len }
    }
}

impl<'a, M> Iterator for Iter<'a, M> {
    type Item = &'a M;

    fn next(&mut self) -> Option<&'a M> {
        loop {
            if let Some(item) = self.current.next() {
                self.remaining -= 1;
                return Some(item);
            }
            self.current = self.slices.next()?.iter();
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<M> ExactSizeIterator for Iter<'_, M> {}

impl<M> FusedIterator for Iter<'_, M> {}
