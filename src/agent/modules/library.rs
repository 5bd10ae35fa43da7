//! The program library module: programs an agent saved, under ids that no other library of
//! its tree of forks and execs ever issues.
//!
//! Ids are numbers of an arithmetic progression `next, next + stride, …`, rendered as
//! fixed-width lowercase base 36. A library starts with `(0, 1)`; a fork splits the
//! progression into its even and odd terms (the forker keeps `(next, 2·stride)`, the copy gets
//! `(next + stride, 2·stride)`), so the two can never issue the same number, nor can any of
//! their descendants. An exec keeps the progression and may change the width; strings of
//! different widths are never equal, and within a width the rendering is one-to-one. See
//! `docs/agent-modules.md` for the proof sketch.

use super::error::{ModuleError, check_len};
use super::limits::{MODULE_TEXT_BYTES_MAX, PROGRAM_DESCRIPTION_BYTES_MAX, PROGRAM_SOURCE_BYTES_MAX};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::num::NonZeroU32;

/// The digits of an id, in order.
const ID_DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// One saved program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Program {
    /// The id the library issued for it.
    pub id: String,
    /// What it does, in a sentence or two.
    pub description: String,
    /// Its source text.
    pub source: String,
}

impl Program {
    fn text_bytes(&self) -> usize {
        self.description.len() + self.source.len()
    }
}

/// The numbers a library may still issue: `next`, `next + stride`, … up to `u64::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Progression {
    next: u64,
    stride: u64,
}

/// Saved programs, oldest first, at most `retention_entries` of them (and at most
/// [`MODULE_TEXT_BYTES_MAX`] of text): saving past either bound evicts the oldest. An
/// evicted program's id stays issued; no id is issued twice anywhere in the library's tree of
/// forks and execs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramLibrary {
    programs: VecDeque<Program>,
    retention_entries: NonZeroU32,
    id_length: u8,
    /// `None` once the library's share of the number space is used up (an overflow).
    ids: Option<Progression>,
    issued: u64,
}

impl ProgramLibrary {
    /// An empty library, the root of its tree: it may issue every number from 0. An
    /// `id_length` of 0 issues nothing.
    pub fn new(retention_entries: NonZeroU32, id_length: u8) -> Self {
        ProgramLibrary {
            programs: VecDeque::new(),
            retention_entries,
            id_length,
            ids: Some(Progression { next: 0, stride: 1 }),
            issued: 0,
        }
    }

    /// Saves a program under a newly issued id and returns it; evicts the oldest programs
    /// past the retention. Refuses an overlong description or source, and
    /// [`ModuleError::LibraryIdsExhausted`] when no id is left at this length (nothing is
    /// issued or saved then).
    pub fn save(&mut self, description: String, source: String) -> Result<&Program, ModuleError> {
        check_len("program description", &description, PROGRAM_DESCRIPTION_BYTES_MAX)?;
        check_len("program source", &source, PROGRAM_SOURCE_BYTES_MAX)?;
        let id = self.issue()?;
        self.programs.push_back(Program { id, description, source });
        self.trim();
        // `trim` never evicts the newest program, so the library is not empty here.
        Ok(&self.programs[self.programs.len() - 1])
    }

    /// The retained program with this id.
    pub fn fetch(&self, id: &str) -> Option<&Program> {
        self.programs.iter().find(|p| p.id == id)
    }

    /// The retained programs, oldest first.
    pub fn programs(&self) -> impl ExactSizeIterator<Item = &Program> {
        self.programs.iter()
    }

    /// Whether no program is retained.
    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }

    /// How many ids this library's line has issued: its own, and for a fork, its forker's
    /// before the fork.
    pub fn issued_count(&self) -> u64 {
        self.issued
    }

    /// How many programs the library keeps.
    pub fn retention_entries(&self) -> NonZeroU32 {
        self.retention_entries
    }

    /// The length of the ids it issues next, in characters.
    pub fn id_length(&self) -> u8 {
        self.id_length
    }

    /// Splits the library for a fork: returns the copy (the same programs) and keeps for each
    /// of the two a disjoint half of the numbers this one could still issue. If halving would
    /// overflow, the copy gets no numbers at all (its saves are refused) and this library
    /// keeps its own.
    pub fn fork(&mut self) -> ProgramLibrary {
        let halves = self.ids.and_then(|p| {
            let stride = p.stride.checked_mul(2)?;
            let copy_next = p.next.checked_add(p.stride)?;
            Some((Progression { next: p.next, stride }, Progression { next: copy_next, stride }))
        });
        let copy_ids = match halves {
            Some((mine, theirs)) => {
                self.ids = Some(mine);
                Some(theirs)
            }
            None => None,
        };
        ProgramLibrary { ids: copy_ids, ..self.clone() }
    }

    /// Takes a successor profile's settings on an exec: keeps the programs and the numbers,
    /// evicts the oldest programs past the new retention, and issues ids of the new length
    /// from now on (an id of another length never equals one of this length, and no number
    /// is issued twice, so no id repeats).
    pub fn reresolve(&mut self, retention_entries: NonZeroU32, id_length: u8) {
        self.retention_entries = retention_entries;
        self.id_length = id_length;
        self.trim();
    }

    /// The next id, rendered; the number is spent only if it renders at this length.
    fn issue(&mut self) -> Result<String, ModuleError> {
        let exhausted = ModuleError::LibraryIdsExhausted { id_length: self.id_length };
        let progression = self.ids.ok_or_else(|| exhausted.clone())?;
        let id = render(progression.next, self.id_length).ok_or(exhausted)?;
        self.ids = progression
            .next
            .checked_add(progression.stride)
            .map(|next| Progression { next, stride: progression.stride });
        self.issued = self.issued.saturating_add(1);
        Ok(id)
    }

    /// Evicts the oldest programs past the retention or the text bound; the newest program
    /// always stays (one program is well inside the text bound).
    fn trim(&mut self) {
        let retention = usize::try_from(self.retention_entries.get()).unwrap_or(usize::MAX);
        let mut bytes: usize = self.programs.iter().map(Program::text_bytes).sum();
        while self.programs.len() > 1 && (self.programs.len() > retention || bytes > MODULE_TEXT_BYTES_MAX) {
            if let Some(evicted) = self.programs.pop_front() {
                bytes -= evicted.text_bytes();
            }
        }
    }
}

/// `number` as exactly `width` lowercase base-36 digits, or `None` if it needs more (or the
/// width is 0).
fn render(number: u64, width: u8) -> Option<String> {
    if width == 0 {
        return None;
    }
    let mut digits = vec![b'0'; usize::from(width)];
    let mut rest = number;
    for slot in digits.iter_mut().rev() {
        *slot = ID_DIGITS[(rest % 36) as usize];
        rest /= 36;
    }
    if rest != 0 {
        return None;
    }
    String::from_utf8(digits).ok()
}
