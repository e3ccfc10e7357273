use std::time::Duration;

use super::*;

struct Positions(Vec<u32>);

impl HeapPositions for Positions {
    fn set_heap_pos(&mut self, slot: u32, pos: u32) {
        self.0[slot as usize] = pos;
    }
}

fn check(heap: &DelayHeap, pos: &Positions) {
    for (i, e) in heap.entries.iter().enumerate() {
        assert_eq!(
            pos.0[e.slot as usize] as usize, i,
            "position of slot {}",
            e.slot
        );
        if i > 0 {
            assert!(!e.before(&heap.entries[(i - 1) / 2]), "heap order at {i}");
        }
    }
}

#[test]
fn pops_in_deadline_then_sequence_order_and_tracks_positions() {
    let base = Instant::now();
    let mut heap = DelayHeap::default();
    let mut pos = Positions(vec![u32::MAX; 64]);
    // Deadlines chosen so that ties exist and sequence numbers decide.
    let mut expected = Vec::new();
    for slot in 0..64u32 {
        let deadline = base + Duration::from_millis(u64::from((slot * 7919) % 13));
        heap.push(
            DelayEntry {
                deadline,
                seq: u64::from(slot),
                slot,
            },
            &mut pos,
        );
        expected.push((deadline, u64::from(slot), slot));
        check(&heap, &pos);
    }
    // Remove a few from the middle, and move some earlier.
    for slot in [5u32, 17, 40] {
        let e = heap.remove(pos.0[slot as usize], &mut pos);
        assert_eq!(e.slot, slot);
        expected.retain(|x| x.2 != slot);
        check(&heap, &pos);
    }
    for (n, slot) in [3u32, 33, 63].into_iter().enumerate() {
        let seq = 100 + n as u64;
        heap.advance(pos.0[slot as usize], base, seq, &mut pos);
        for x in &mut expected {
            if x.2 == slot && base < x.0 {
                *x = (base, seq, slot);
            }
        }
        check(&heap, &pos);
    }
    expected.sort();
    let mut got = Vec::new();
    while let Some(e) = heap.pop(&mut pos) {
        got.push((e.deadline, e.seq, e.slot));
        check(&heap, &pos);
    }
    assert_eq!(got, expected);
}

#[test]
fn advance_to_a_later_deadline_is_ignored() {
    let base = Instant::now();
    let mut heap = DelayHeap::default();
    let mut pos = Positions(vec![0; 1]);
    heap.push(
        DelayEntry {
            deadline: base,
            seq: 0,
            slot: 0,
        },
        &mut pos,
    );
    heap.advance(0, base + Duration::from_secs(1), 1, &mut pos);
    assert_eq!(heap.peek().map(|e| (e.deadline, e.seq)), Some((base, 0)));
}
