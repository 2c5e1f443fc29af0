//! Mail between two processes of a node made believe: two mappings of one segment, each with
//! the mail of its own "process", and threads for their ranks.

use super::*;

/// Two processes' mail over one segment: ranks 0 and 1 in the first, 2 and 3 in the second.
fn pair() -> (Arc<NodeMail>, Arc<NodeMail>) {
    let len = bytes(4) + 4096;
    let (a, name) = Segment::create(len).unwrap();
    let b = Segment::open(&name, len).unwrap();
    Segment::unlink(&name).unwrap();
    let first = NodeMail::new(Arc::new(a), 4096, (0, 4), (0, 2));
    let second = NodeMail::new(Arc::new(b), 4096, (0, 4), (2, 2));
    (Arc::new(first), Arc::new(second))
}

/// The payload of message `k` from `from` to `to`: `len` bytes that name all three.
fn payload(from: usize, to: usize, k: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (from * 31 + to * 7 + k * 13 + i) as u8)
        .collect()
}

/// Lengths of the messages: empty, short, around the header and the ring, several rings.
const LENS: [usize; 8] = [
    0,
    1,
    39,
    41,
    4000,
    RING_BYTES - 1,
    RING_BYTES + 3,
    3 * RING_BYTES + 5,
];

/// Sends every message of [`LENS`] from `me` to `to`, in order, contexts alternating.
fn send_all(mail: &NodeMail, me: usize, to: usize) {
    for (k, &len) in LENS.iter().enumerate() {
        let data = payload(me, to, k, len);
        let header = Header {
            ctx: (k % 2) as u64,
            tag: k as u32,
            typ: 7,
            count: len as u64,
            bytes: len as u64,
        };
        let mut s = mail.begin(me, to, header);
        while !mail.step(me, &mut s, &data).unwrap() {
            // The receiver also sends: collect meanwhile, as a waiting send does.
            mail.collect(me, mail.others()).unwrap();
            std::thread::yield_now();
        }
    }
}

/// Receives every message of [`LENS`] from each of `from` at `me`, checking each sender's
/// order, contexts, tags and payloads.
fn receive_all(mail: &NodeMail, me: usize, from: &[usize]) {
    let mut got: Vec<Vec<Letter>> = from.iter().map(|_| Vec::new()).collect();
    while got.iter().map(Vec::len).sum::<usize>() < from.len() * LENS.len() {
        mail.collect(me, mail.others()).unwrap();
        for ctx in 0..2 {
            while let Some(l) = mail.next(me, ctx) {
                let i = from.iter().position(|&f| f == l.src).expect("a sender");
                got[i].push(l);
            }
        }
        std::thread::yield_now();
    }
    for (i, letters) in got.iter().enumerate() {
        // Order within a context is the sender's; across contexts, by tag.
        for ctx in 0..2u64 {
            let tags: Vec<u32> = letters
                .iter()
                .filter(|l| l.header.ctx == ctx)
                .map(|l| l.header.tag)
                .collect();
            assert!(tags.windows(2).all(|w| w[0] < w[1]), "{tags:?}");
        }
        for l in letters {
            let k = l.header.tag as usize;
            assert_eq!(l.header.bytes as usize, LENS[k]);
            assert_eq!(l.payload, payload(from[i], me, k, LENS[k]), "message {k}");
        }
    }
}

#[test]
fn messages_of_every_length_both_ways_in_order() {
    let (a, b) = pair();
    std::thread::scope(|s| {
        // Ranks 0 and 2 send to each other at once; ranks 1 and 3 send to rank 2 and 0.
        s.spawn(|| send_all(&a, 0, 2));
        s.spawn(|| send_all(&b, 2, 0));
        s.spawn(|| send_all(&a, 1, 2));
        s.spawn(|| send_all(&b, 3, 0));
        s.spawn(|| receive_all(&a, 0, &[2, 3]));
        s.spawn(|| receive_all(&b, 2, &[0, 1]));
    });
}

#[test]
fn sends_to_one_receiver_take_turns_in_call_order() {
    let (a, b) = pair();
    let header = |tag| Header {
        ctx: 0,
        tag,
        typ: 1,
        count: 8,
        bytes: 8,
    };
    let mut first = a.begin(0, 3, header(1));
    let mut second = a.begin(0, 3, header(2));
    let skipped = a.begin(0, 3, header(3));
    let mut third = a.begin(0, 3, header(4));
    assert!(!a.step(0, &mut second, &[2; 8]).unwrap(), "not its turn");
    a.give_up(0, &skipped);
    assert!(a.step(0, &mut first, &[1; 8]).unwrap());
    assert!(
        a.step(0, &mut first, &[1; 8]).unwrap(),
        "written once, done after"
    );
    assert!(a.step(0, &mut second, &[2; 8]).unwrap());
    assert!(
        a.step(0, &mut third, &[4; 8]).unwrap(),
        "the skipped turn is passed"
    );
    b.collect(3, b.others()).unwrap();
    let tags: Vec<u32> = std::iter::from_fn(|| b.next(3, 0))
        .map(|l| l.header.tag)
        .collect();
    assert_eq!(tags, [1, 2, 4]);
}

#[test]
fn a_send_given_up_halfway_breaks_its_ring_for_both_sides() {
    let (a, b) = pair();
    let long = vec![5u8; 2 * RING_BYTES];
    let header = Header {
        ctx: 0,
        tag: 9,
        typ: 1,
        count: long.len() as u64,
        bytes: long.len() as u64,
    };
    let mut whole = a.begin(1, 2, Header { bytes: 3, ..header });
    assert!(a.step(1, &mut whole, &[1, 2, 3]).unwrap());
    let mut s = a.begin(1, 2, header);
    assert!(!a.step(1, &mut s, &long).unwrap(), "longer than the ring");
    a.give_up(1, &s);
    let mut after = a.begin(1, 2, header);
    assert_eq!(a.step(1, &mut after, &long), Err(Broken));
    assert_eq!(b.collect(2, b.others()), Err((Broken, 1)));
    let l = b
        .next(2, 0)
        .expect("the whole message before the broken one");
    assert_eq!(l.payload, [1, 2, 3]);
    // Another pair's ring still works.
    let mut other = a.begin(0, 2, Header { bytes: 1, ..header });
    assert!(a.step(0, &mut other, &[8]).unwrap());
}

#[test]
fn a_receive_reads_the_next_frame_straight_into_its_buffer() {
    let (a, b) = pair();
    let long = payload(1, 3, 0, 3 * RING_BYTES + 7);
    let header = |tag, bytes: usize| Header {
        ctx: 4,
        tag,
        typ: 2,
        count: bytes as u64,
        bytes: bytes as u64,
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            for (tag, data) in [(1, &long[..]), (2, &long[..5])] {
                let mut sending = a.begin(1, 3, header(tag, data.len()));
                while !a.step(1, &mut sending, data).unwrap() {
                    std::thread::yield_now();
                }
            }
        });
        let h = loop {
            if let Look::Frame(h) = b.look(3, 4, 1) {
                break h;
            }
            std::thread::yield_now();
        };
        assert_eq!(h, header(1, long.len()));
        assert_eq!(b.look(3, 4, 0), Look::Nothing, "nothing from rank 0");
        let mut buf = vec![0u8; long.len()];
        let mut d = b.direct(3, 1);
        let mut filled = 0;
        // Others' reads leave the ring alone meanwhile.
        b.collect(3, b.others()).unwrap();
        assert_eq!(b.look(3, 4, 1), Look::Busy, "a frame is being read");
        while d.left() > 0 {
            filled += d.pull(&mut buf[filled..]).unwrap();
        }
        drop(d);
        assert_eq!(buf, long);
        // The next frame goes the usual way.
        while b.look(3, 4, 1) != Look::Busy {
            b.collect(3, b.others()).unwrap();
        }
        assert_eq!(b.next(3, 4).unwrap().payload, long[..5]);
        assert_eq!(b.look(3, 4, 1), Look::Nothing);
    });
}

#[test]
fn a_direct_read_given_up_halfway_leaves_its_ring_unreadable() {
    let (a, b) = pair();
    let data = vec![3u8; 100];
    let header = Header {
        ctx: 0,
        tag: 0,
        typ: 2,
        count: 100,
        bytes: 100,
    };
    let mut s = a.begin(0, 2, header);
    assert!(a.step(0, &mut s, &data).unwrap());
    assert_eq!(b.look(2, 0, 0), Look::Frame(header));
    let mut d = b.direct(2, 0);
    assert_eq!(d.pull(&mut [0u8; 10]).unwrap(), 10);
    drop(d);
    assert_eq!(b.collect(2, b.others()), Err((Broken, 0)));
}
