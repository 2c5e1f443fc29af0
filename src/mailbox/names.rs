//! The names of element types, for error messages: a message carries only its element type's
//! fingerprint ([`type_fingerprint`]), so a receiver that finds another type than it expected
//! looks the sender's fingerprint up here to name it (`std::any::type_name`).
//!
//! Every sender notes its element type before it sends ([`note`]). That is on the fast path, so
//! it costs a thread-local lookup in a small direct-mapped cache of the fingerprints this
//! thread has already noted; only a type new to the thread takes the process-wide lock. A
//! fingerprint that was never noted in this process (a type only another MPI process sent)
//! stays nameless, and the message says its size instead.

use super::type_fingerprint;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Fingerprints this thread has noted, by their low bits (a direct-mapped cache).
const CACHED: usize = 16;

thread_local! {
    static NOTED: [Cell<u64>; CACHED] = const { [const { Cell::new(0) }; CACHED] };
}

/// Every fingerprint noted in this process, with its type's name.
fn registry() -> &'static parking_lot::Mutex<HashMap<u64, &'static str>> {
    static NAMES: OnceLock<parking_lot::Mutex<HashMap<u64, &'static str>>> = OnceLock::new();
    NAMES.get_or_init(Default::default)
}

/// Notes `T`'s name under its fingerprint, so that a receiver of this process can name it.
#[inline]
pub(crate) fn note<T: 'static>() {
    let fp = type_fingerprint::<T>();
    // The fingerprint's low half is the element size, the high half the type's hash.
    let slot = ((fp >> 32) as usize) % CACHED;
    let hit = NOTED.with(|n| n[slot].get() == fp);
    if !hit {
        note_slow::<T>(fp, slot);
    }
}

#[cold]
fn note_slow<T: 'static>(fp: u64, slot: usize) {
    registry().lock().insert(fp, std::any::type_name::<T>());
    NOTED.with(|n| n[slot].set(fp));
}

/// The name of the type whose fingerprint is `fp`, if a thread of this process noted it.
pub(crate) fn name_of(fp: u64) -> Option<&'static str> {
    registry().lock().get(&fp).copied()
}

/// Names the element type of fingerprint `fp` for an error message: its name if this process
/// noted it, else its size.
pub(crate) fn describe(fp: u64) -> String {
    match (name_of(fp), super::fingerprint_size(fp)) {
        (Some(name), _) => name.to_string(),
        (None, 0) => "a zero-sized type".to_string(),
        (None, size) => format!("a type of {size} bytes"),
    }
}

/// The error of point-to-point `op` on `rank` for a message from `peer` with tag `tag` that the
/// call matched but cannot take: `count` elements of the type of fingerprint `typ` (`None`:
/// the count is not known yet), into a buffer of `capacity` elements of `T` (`None`: a probe).
pub(crate) fn p2p_mismatch<T: 'static>(
    (rank, peer, op): (usize, usize, &'static str),
    tag: u32,
    capacity: Option<usize>,
    typ: u64,
    count: Option<usize>,
) -> crate::error::Error {
    let mine = std::any::type_name::<T>();
    let expected = match capacity {
        Some(n) => format!("a message with tag {tag} of up to {}", elements(n, mine)),
        None => format!("a message with tag {tag} of elements of {mine}"),
    };
    let found = if typ == type_fingerprint::<T>() {
        let n = count.map_or_else(|| "more".to_string(), |n| n.to_string());
        format!("{}, more than the buffer holds", elements(n, mine))
    } else {
        let theirs = describe(typ);
        match count {
            Some(n) => elements(n, &theirs),
            None => format!("a message of elements of {theirs}"),
        }
    };
    crate::error::Error::Mismatch {
        rank,
        peer,
        op,
        expected,
        found,
    }
}

/// "`n` elements of `of`", with the singular for one.
pub(crate) fn elements(n: impl std::fmt::Display, of: &str) -> String {
    let one = n.to_string() == "1";
    format!("{n} element{} of {of}", if one { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noted_types_are_named_and_others_are_not() {
        struct Unsent;
        note::<[u16; 3]>();
        note::<f64>();
        assert_eq!(name_of(type_fingerprint::<[u16; 3]>()), Some("[u16; 3]"));
        assert_eq!(name_of(type_fingerprint::<f64>()), Some("f64"));
        assert_eq!(name_of(type_fingerprint::<Unsent>()), None);
        assert_eq!(describe(type_fingerprint::<f64>()), "f64");
        assert_eq!(describe(type_fingerprint::<Unsent>()), "a zero-sized type");
        assert_eq!(
            describe(type_fingerprint::<[Unsent; 0]>() | 12),
            "a type of 12 bytes"
        );
    }
}
