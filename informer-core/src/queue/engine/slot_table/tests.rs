use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

/// Every entry is reachable from its home without crossing an empty position.
fn check_invariants(table: &SlotTable) {
    let mask = table.mask();
    let mut count = 0;
    for (pos, &entry) in table.entries.iter().enumerate() {
        if entry == EMPTY {
            continue;
        }
        count += 1;
        let mut p = table.home(tag_of(entry));
        while p != pos {
            assert_ne!(table.entries[p], EMPTY, "entry at {pos} unreachable");
            p = (p + 1) & mask;
        }
    }
    assert_eq!(count, table.len);
    assert!(table.len * 2 <= table.entries.len());
}

#[test]
fn finds_inserted_entries_and_forgets_removed_ones() {
    let mut table = SlotTable::default();
    for id in 0..1000u32 {
        // Few distinct tags: many equal tags share probe sequences.
        table.insert(id % 7, id);
    }
    check_invariants(&table);
    for id in 0..1000u32 {
        assert_eq!(table.find(id % 7, |i| i == id).map(|f| f.id), Some(id));
    }
    for id in (0..1000u32).step_by(2) {
        table.remove_id(id % 7, id);
    }
    check_invariants(&table);
    assert_eq!(table.len(), 500);
    for id in 0..1000u32 {
        let found = table.find(id % 7, |i| i == id).is_some();
        assert_eq!(found, id % 2 == 1);
    }
    table.clear_and_shrink(0);
    assert_eq!(table.len(), 0);
    assert_eq!(table.entries.len(), MIN_CAPACITY);
    assert!(table.find(1, |_| true).is_none());
}

proptest! {
    #[test]
    fn behaves_like_a_map(ops in prop::collection::vec((any::<bool>(), 0u32..64, 0u32..4), 1..400)) {
        let mut table = SlotTable::default();
        let mut model: HashMap<u32, u32> = HashMap::new(); // id -> tag
        for (insert, id, tag_bits) in ops {
            // Tags collide a lot on purpose; some are near u32::MAX.
            let tag = if tag_bits == 3 { u32::MAX - id % 2 } else { tag_bits };
            if insert {
                if let std::collections::hash_map::Entry::Vacant(v) = model.entry(id) {
                    v.insert(tag);
                    table.insert(tag, id);
                }
            } else if let Some(tag) = model.remove(&id) {
                let found = table.find(tag, |i| i == id);
                prop_assert!(found.is_some());
                if let Some(found) = found {
                    table.remove(found);
                }
            }
            check_invariants(&table);
            prop_assert_eq!(table.len(), model.len());
            for (&id, &tag) in &model {
                prop_assert_eq!(table.find(tag, |i| i == id).map(|f| f.id), Some(id));
            }
        }
    }
}
