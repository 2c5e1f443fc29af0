//! Point-to-point matching: tags, receives from any rank, probes, "no peer", `dup`, messages
//! shorter than the buffer, and the errors of each — compared with what a sequential model of
//! MPI's matching rules says each receive gets.

use corecoll::{Comm, Error, Peer, Result, Status, ANY_TAG, TAG_MAX};

/// A message's payload: `len` words naming its sender, tag and number on that (sender, tag).
fn payload(src: usize, tag: u32, k: usize, len: usize) -> Vec<u64> {
    (0..len)
        .map(|i| ((src as u64) << 48) ^ (u64::from(tag) << 32) ^ ((k as u64) << 16) ^ i as u64)
        .collect()
}

/// Rank 0 sends, on two tags, large (rendezvous) and small messages in an interleaved order;
/// rank 1 receives tag 2 first, so the tag-1 messages before it are moved aside (also a
/// rendezvous one, whose sender is waiting), then tag 1 in order.
#[test]
fn a_receive_for_another_tag_moves_earlier_messages_aside() {
    let sizes = [3usize, 5000, 1, 200_000, 7];
    let plan: Vec<(u32, usize)> = vec![(1, 0), (1, 1), (2, 2), (1, 3), (2, 4)];
    let out = corecoll::run(2, |comm| -> Result<()> {
        if comm.rank() == 0 {
            for (k, &(tag, i)) in plan.iter().enumerate() {
                comm.send_tagged(1, tag, &payload(0, tag, k, sizes[i]))?;
            }
            return Ok(());
        }
        // Tag 2 first, then tag 1: each tag's messages in the order sent.
        for want in [2u32, 1] {
            for (k, &(tag, i)) in plan.iter().enumerate().filter(|(_, &(t, _))| t == want) {
                let mut buf = vec![0u64; sizes[i]];
                let st = comm.recv_tagged(0, want, &mut buf)?;
                assert_eq!(
                    st,
                    Status {
                        source: Some(0),
                        tag,
                        len: sizes[i]
                    }
                );
                assert_eq!(buf, payload(0, tag, k, sizes[i]), "message {k}");
            }
        }
        Ok(())
    })
    .unwrap();
    assert!(out.iter().all(Result::is_ok), "{out:?}");
}

/// Every rank sends to every rank (itself too) a few eager messages on several tags; every
/// rank then receives them with the order of tags reversed and senders in turn, by name and
/// from any rank, and checks each against the model: per (sender, tag) in sending order.
#[test]
fn all_pairs_with_tags_and_any_source() {
    for p in [1usize, 2, 3, 4, 5, 8, 13] {
        let out = corecoll::run(p, |comm| -> Result<()> {
            let (r, p) = (comm.rank(), comm.size());
            let tags = [0u32, 1, 7, TAG_MAX];
            for q in 0..p {
                for k in 0..2 {
                    for &tag in &tags {
                        let len = (r + q + k + tag as usize) % 5;
                        comm.send_tagged(q, tag, &payload(r, tag, k, len))?;
                    }
                }
            }
            // By name: the last two tags, senders in reverse order.
            for &tag in tags.iter().rev().take(2) {
                for q in (0..p).rev() {
                    for k in 0..2 {
                        let len = (r + q + k + tag as usize) % 5;
                        let mut buf = vec![u64::MAX; 8];
                        let st = comm.recv_tagged(q, tag, &mut buf)?;
                        assert_eq!(
                            st,
                            Status {
                                source: Some(q),
                                tag,
                                len
                            }
                        );
                        assert_eq!(buf[..len], payload(q, tag, k, len)[..]);
                        assert!(buf[len..].iter().all(|&x| x == u64::MAX), "rest untouched");
                    }
                }
            }
            // From any rank with any tag: what is left, each (sender, tag) in order.
            let mut next = std::collections::HashMap::new();
            for _ in 0..2 * 2 * p {
                let mut buf = vec![0u64; 8];
                let st = comm.recv_tagged(Peer::Any, ANY_TAG, &mut buf)?;
                let q = st.source.unwrap();
                assert!(st.tag == 0 || st.tag == 1, "{st:?}");
                let k = next.entry((q, st.tag)).or_insert(0usize);
                assert_eq!(st.len, (r + q + *k + st.tag as usize) % 5);
                assert_eq!(buf[..st.len], payload(q, st.tag, *k, st.len)[..]);
                *k += 1;
            }
            assert!(next.values().all(|&k| k == 2));
            assert_eq!(comm.iprobe::<u64>(Peer::Any, ANY_TAG)?, None);
            comm.barrier()
        })
        .unwrap();
        assert!(out.iter().all(Result::is_ok), "p = {p}: {out:?}");
    }
}

/// Many senders, one receiver from any rank, messages across the eager/rendezvous boundary:
/// every message arrives once, each sender's in order; more ranks than cores.
#[test]
fn fan_in_from_any_rank_keeps_each_senders_order() {
    for p in [2usize, 3, 9, 33] {
        let out = corecoll::run(p, |comm| -> Result<()> {
            let r = comm.rank();
            let per = 6;
            let len = |q: usize, k: usize| [0, 1, 127, 128, 129, 3000][(q + k) % 6];
            if r != 0 {
                for k in 0..per {
                    comm.send_tagged(0, 5, &payload(r, 5, k, len(r, k)))?;
                }
                return Ok(());
            }
            let mut next = vec![0usize; p];
            let mut buf = vec![0u64; 3000];
            for _ in 0..per * (p - 1) {
                let st = comm.recv_tagged(Peer::Any, 5, &mut buf)?;
                let q = st.source.unwrap();
                assert_eq!(st.len, len(q, next[q]));
                assert_eq!(buf[..st.len], payload(q, 5, next[q], st.len)[..]);
                next[q] += 1;
            }
            assert!(next[1..].iter().all(|&k| k == per));
            Ok(())
        })
        .unwrap();
        assert!(out.iter().all(Result::is_ok), "p = {p}: {out:?}");
    }
}

/// A probe reports the next matching message (its length in elements) without taking it;
/// a receive then gets exactly that message. `iprobe` does not wait.
#[test]
fn probe_then_receive_a_message_of_unknown_length() {
    for p in [2usize, 3, 6] {
        let out = corecoll::run(p, |comm| -> Result<Vec<(usize, usize)>> {
            let r = comm.rank();
            if r != 0 {
                assert_eq!(comm.iprobe::<f32>(0, ANY_TAG)?, None);
                comm.barrier()?;
                comm.send_tagged(0, r as u32, &vec![r as f32; 40 * r])?;
                return Ok(vec![]);
            }
            assert_eq!(comm.iprobe::<f32>(Peer::Any, ANY_TAG)?, None);
            comm.barrier()?;
            let mut got = vec![];
            for _ in 1..p {
                let st = comm.probe::<f32>(Peer::Any, ANY_TAG)?;
                let q = st.source.unwrap();
                assert_eq!((st.tag as usize, st.len), (q, 40 * q));
                // Probing again finds the same message.
                assert_eq!(comm.probe::<f32>(q, st.tag)?, st);
                assert_eq!(comm.iprobe::<f32>(q, ANY_TAG)?, Some(st));
                let mut buf = vec![0.0f32; st.len];
                assert_eq!(comm.recv_tagged(q, st.tag, &mut buf)?, st);
                assert!(buf.iter().all(|&x| x == q as f32));
                got.push((q, st.len));
            }
            got.sort_unstable();
            Ok(got)
        })
        .unwrap();
        let want: Vec<(usize, usize)> = (1..p).map(|q| (q, 40 * q)).collect();
        assert_eq!(out[0], Ok(want), "p = {p}");
    }
}

/// Probes of zero-sized elements: the count travels in the message.
#[test]
fn probe_and_receive_zero_sized_elements() {
    let out = corecoll::run(2, |comm| -> Result<Status> {
        if comm.rank() == 0 {
            comm.send_tagged(1, 3, &[(); 9])?;
            comm.send(1, &[(); 2])?;
            return Ok(Status {
                source: None,
                tag: 0,
                len: 0,
            });
        }
        assert_eq!(comm.probe::<()>(0, 0)?.len, 2);
        let st = comm.probe::<()>(0, 3)?;
        assert_eq!(comm.recv_tagged(0, 3, &mut [(); 10])?, st);
        assert_eq!(comm.recv(0, &mut [(); 2])?.len, 2);
        Ok(st)
    })
    .unwrap();
    assert_eq!(
        out[1],
        Ok(Status {
            source: Some(0),
            tag: 3,
            len: 9
        })
    );
}

/// A halo exchange on a line, one call on every rank: the boundary ranks pass no peer, whose
/// receive leaves the buffer alone and whose send sends nothing.
#[test]
fn halo_exchange_with_no_peer_at_the_boundaries() {
    for p in 1..=9usize {
        let out = corecoll::run(p, |comm| -> Result<[i64; 2]> {
            let (r, p) = (comm.rank(), comm.size());
            let left = r.checked_sub(1);
            let right = (r + 1 < p).then_some(r + 1);
            let mut halo = [-1i64; 2];
            let st = comm.sendrecv(right, &[r as i64 * 10], left, &mut halo[..1])?;
            assert_eq!(st.source, left);
            comm.sendrecv(left, &[r as i64 * 10 + 1], right, &mut halo[1..])?;
            Ok(halo)
        })
        .unwrap();
        for (r, got) in out.into_iter().enumerate() {
            let from_left = if r == 0 { -1 } else { (r as i64 - 1) * 10 };
            let from_right = if r + 1 == p {
                -1
            } else {
                (r as i64 + 1) * 10 + 1
            };
            assert_eq!(got, Ok([from_left, from_right]), "p = {p}, rank {r}");
        }
    }
}

#[test]
fn calls_on_no_peer_complete_at_once() {
    let none = Status {
        source: None,
        tag: ANY_TAG,
        len: 0,
    };
    let out = corecoll::run(2, |comm| -> Result<()> {
        comm.send(Peer::None, &[1u8; 5000])?;
        comm.send_tagged(None, 4, &[1u8])?;
        let mut buf = [7u8; 3];
        assert_eq!(comm.recv(Peer::None, &mut buf)?, none);
        assert_eq!(buf, [7; 3]);
        assert_eq!(comm.probe::<u8>(Peer::None, 3)?, none);
        assert_eq!(comm.iprobe::<u8>(None, ANY_TAG)?, Some(none));
        assert_eq!(comm.sendrecv(None, &[1u8], None, &mut buf)?, none);
        Ok(())
    })
    .unwrap();
    assert!(out.iter().all(Result::is_ok), "{out:?}");
}

/// Messages on a duplicate never match the original's, in either order of receiving.
#[test]
fn dup_separates_message_streams() {
    for p in [1usize, 2, 5] {
        let out = corecoll::run(p, |comm| -> Result<()> {
            let (r, p) = (comm.rank(), comm.size());
            let dup = comm.dup()?;
            assert_eq!((dup.rank(), dup.size()), (r, p));
            let to = (r + 1) % p;
            let from = (r + p - 1) % p;
            comm.send(to, &[1u32, r as u32])?;
            dup.send(to, &[2u32, r as u32])?;
            let (mut a, mut b) = ([0u32; 2], [0u32; 2]);
            dup.recv(from, &mut b)?;
            comm.recv(from, &mut a)?;
            assert_eq!((a, b), ([1, from as u32], [2, from as u32]));
            dup.barrier()
        })
        .unwrap();
        assert!(out.iter().all(Result::is_ok), "p = {p}: {out:?}");
    }
}

fn first_error(out: Vec<Result<()>>) -> Error {
    out.into_iter().find_map(Result::err).expect("an error")
}

#[test]
fn bad_peers_and_tags_are_errors() {
    let e = first_error(corecoll::run(2, |comm: &Comm| comm.send(Peer::Any, &[1u8])).unwrap());
    assert!(
        matches!(e.root_cause(), Error::InvalidArgument { op: "send", .. }),
        "{e}"
    );
    assert!(e.to_string().contains("Peer::Any is for receives"), "{e}");

    let e = first_error(
        corecoll::run(2, |comm: &Comm| comm.send_tagged(1, TAG_MAX + 1, &[1u8])).unwrap(),
    );
    assert!(e.to_string().contains("tag 32768 is out of range"), "{e}");

    let e =
        first_error(corecoll::run(2, |comm: &Comm| comm.recv(5, &mut [0u8]).map(drop)).unwrap());
    assert!(
        matches!(e.root_cause(), Error::RankOutOfRange { peer: 5, .. }),
        "{e}"
    );
}

/// A probe for elements of another type than were sent is a mismatch naming both types.
#[test]
fn probe_of_another_element_type_is_a_mismatch() {
    let out = corecoll::run(2, |comm| -> Result<()> {
        if comm.rank() == 0 {
            comm.send(1, &[1.5f64; 3])?;
            return comm.barrier();
        }
        comm.probe::<u32>(0, 0).map(drop)
    })
    .unwrap();
    let e = out[1].clone().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Mismatch {
                rank: 1,
                peer: 0,
                op: "probe",
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("of u32") && e.to_string().contains("3 elements of f64"),
        "{e}"
    );
}

/// A receive from any rank fails when no other rank is left to send, and with itself alone.
#[test]
fn receive_from_any_rank_with_nobody_left() {
    let out = corecoll::run(3, |comm| -> Result<()> {
        if comm.rank() != 0 {
            return Ok(());
        }
        comm.recv(Peer::Any, &mut [0u8]).map(drop)
    })
    .unwrap();
    assert!(
        matches!(out[0], Err(Error::PeerExited { rank: 0, .. })),
        "{out:?}"
    );

    let out = corecoll::run(1, |comm| comm.recv(Peer::Any, &mut [0u8]).map(drop)).unwrap();
    assert!(matches!(out[0], Err(Error::SelfDeadlock { .. })), "{out:?}");
}
