use super::*;
use crate::queue::WorkQueue;

#[test]
fn the_hot_fields_share_the_lock_line_and_the_two_after_it() {
    use std::mem::offset_of;
    type S = State<crate::ObjectKey>;
    let queue = WorkQueue::<crate::ObjectKey>::new();
    let lock = &*queue.engine.state as *const _ as usize;
    let data = queue.engine.state.data_ptr() as usize;
    assert_eq!(lock % 64, 0, "the lock starts a line");
    let line = |offset: usize| (data - lock + offset) / 64;
    assert_eq!(line(offset_of!(S, slots)), 0);
    assert_eq!(line(offset_of!(S, heap) + 23), 0);
    assert_eq!(line(offset_of!(S, table)), 1);
    assert_eq!(line(offset_of!(S, timed)), 1);
    assert_eq!(line(offset_of!(S, free)), 2);
    assert_eq!(line(offset_of!(S, adds_total) + 7), 2);
}
