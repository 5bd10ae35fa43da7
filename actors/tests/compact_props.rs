//! Property tests of the compact map and set against the B-tree collections they stand in
//! for: after every step of a random sequence of inserts, removals, retains and clears (keys
//! drawn from a small range so that sequences cross the move from vector to B-tree both ways
//! of growth), both hold the same entries in the same order and answer every lookup alike.
//!
//! 256 cases from a fixed, printed seed with ChaCha; set `COMPACT_PROPS_SEED=<n>` to explore
//! another seed.

mod seeded;

use agentvisor_actors::compact::{CompactMap, CompactSet, FEW};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_SEED: u64 = 0xc0_4ba7_0000_0001;

fn config() -> Config {
    seeded::config("compact_props", "COMPACT_PROPS_SEED", DEFAULT_SEED, 256)
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u16, u32),
    Remove(u16),
    /// Keeps the entries whose key is not a multiple of the divisor.
    Retain(u16),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    // Keys up to four times the vector's bound: sequences grow past it and shrink again.
    let key = 0..(4 * FEW as u16);
    prop_oneof![
        12 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        4 => key.prop_map(Op::Remove),
        1 => (2u16..6).prop_map(Op::Retain),
        1 => Just(Op::Clear),
    ]
}

fn same_map(compact: &CompactMap<u16, u32>, model: &BTreeMap<u16, u32>) -> Result<(), TestCaseError> {
    prop_assert_eq!(compact.len(), model.len());
    prop_assert_eq!(compact.is_empty(), model.is_empty());
    prop_assert!(compact.iter().eq(model.iter()), "in order: {:?} vs {:?}", compact, model);
    prop_assert!(compact.iter().rev().eq(model.iter().rev()), "backwards");
    prop_assert_eq!(compact.iter().len(), model.len());
    prop_assert!(compact.keys().eq(model.keys()));
    prop_assert!(compact.values().eq(model.values()));
    prop_assert_eq!(compact.first_key_value(), model.first_key_value());
    for key in 0..(4 * FEW as u16) {
        prop_assert_eq!(compact.get(&key), model.get(&key));
        prop_assert_eq!(compact.contains_key(&key), model.contains_key(&key));
    }
    Ok(())
}

fn same_set(compact: &CompactSet<u16>, model: &BTreeSet<u16>) -> Result<(), TestCaseError> {
    prop_assert_eq!(compact.len(), model.len());
    prop_assert!(compact.iter().eq(model.iter()), "in order: {:?} vs {:?}", compact, model);
    prop_assert!(compact.iter().rev().eq(model.iter().rev()), "backwards");
    prop_assert_eq!(compact.first(), model.first());
    for key in 0..(4 * FEW as u16) {
        prop_assert_eq!(compact.contains(&key), model.contains(&key));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// A compact map answers as a B-tree map after every step, and two compact maps with the
    /// same entries are equal whichever form each holds them in.
    #[test]
    fn a_compact_map_answers_as_a_btree_map(ops in prop::collection::vec(op(), 0..200)) {
        let mut compact = CompactMap::new();
        let mut model = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => prop_assert_eq!(compact.insert(k, v), model.insert(k, v)),
                Op::Remove(k) => prop_assert_eq!(compact.remove(&k), model.remove(&k)),
                Op::Retain(d) => {
                    compact.retain(|k, _| k % d != 0);
                    model.retain(|k, _| k % d != 0);
                }
                Op::Clear => {
                    compact.clear();
                    model.clear();
                }
            }
            same_map(&compact, &model)?;
            let rebuilt: CompactMap<u16, u32> = model.iter().map(|(k, v)| (*k, *v)).collect();
            prop_assert_eq!(&rebuilt, &compact);
        }
    }

    /// A compact set answers as a B-tree set after every step.
    #[test]
    fn a_compact_set_answers_as_a_btree_set(ops in prop::collection::vec(op(), 0..200)) {
        let mut compact = CompactSet::new();
        let mut model = BTreeSet::new();
        for op in ops {
            match op {
                Op::Insert(k, _) => prop_assert_eq!(compact.insert(k), model.insert(k)),
                Op::Remove(k) => prop_assert_eq!(compact.remove(&k), model.remove(&k)),
                Op::Retain(d) => {
                    compact.retain(|k| k % d != 0);
                    model.retain(|k| k % d != 0);
                }
                Op::Clear => {
                    compact = CompactSet::default();
                    model.clear();
                }
            }
            same_set(&compact, &model)?;
            let rebuilt: CompactSet<u16> = model.iter().copied().collect();
            prop_assert_eq!(&rebuilt, &compact);
        }
    }
}
