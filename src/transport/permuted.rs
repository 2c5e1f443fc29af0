//! A transport whose ranks are another transport's in a different order, so that a flat
//! schedule can run over a communicator's ranks rearranged (the hierarchical collectives run
//! their short-vector schedules over the ranks in group order: `hierarchy::Plan::order`).

use super::Transport;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Tag};

/// `inner`'s ranks renumbered: rank v of this transport is rank `order[v]` of `inner`.
pub(crate) struct Permuted<'a, Tr> {
    inner: &'a Tr,
    /// This transport's rank v is `inner`'s rank `order[v]`.
    order: &'a [usize],
    /// The inverse: `inner`'s rank r is this transport's rank `place[r]`.
    place: &'a [usize],
}

impl<'a, Tr: Transport> Permuted<'a, Tr> {
    /// `inner` renumbered by `order` (a permutation of its ranks) and its inverse `place`.
    pub(crate) fn new(inner: &'a Tr, order: &'a [usize], place: &'a [usize]) -> Self {
        debug_assert_eq!(order.len(), inner.size());
        debug_assert!(order.iter().enumerate().all(|(v, &r)| place[r] == v));
        Permuted {
            inner,
            order,
            place,
        }
    }
}

impl<Tr: Transport> Transport for Permuted<'_, Tr> {
    fn rank(&self) -> usize {
        self.place[self.inner.rank()]
    }

    fn size(&self) -> usize {
        self.inner.size()
    }

    fn fail(&self, e: Error) -> Error {
        self.inner.fail(e)
    }

    fn send<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> Result<()> {
        self.inner.send(self.order[dest], tag, data)
    }

    fn recv<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()> {
        self.inner.recv(self.order[src], tag, buf)
    }

    fn sendrecv<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        recv: &mut [T],
        tag: Tag,
    ) -> Result<()> {
        self.inner
            .sendrecv(self.order[dest], send, self.order[src], recv, tag)
    }

    fn exchange_many<T: Elem>(
        &self,
        sends: &[(usize, &[T])],
        recvs: &mut [(usize, &mut [T])],
        tag: Tag,
    ) -> Result<()> {
        let sends: Vec<(usize, &[T])> = sends.iter().map(|&(d, x)| (self.order[d], x)).collect();
        let mut recvs: Vec<(usize, &mut [T])> = recvs
            .iter_mut()
            .map(|(s, b)| (self.order[*s], &mut **b))
            .collect();
        self.inner.exchange_many(&sends, &mut recvs, tag)
    }

    fn recv_reduce<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        self.inner.recv_reduce(self.order[src], tag, acc, combine)
    }

    fn exchange_reduce<T: Elem>(
        &self,
        peer: usize,
        buf: &mut [T],
        scratch: &mut Vec<T>,
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        self.inner
            .exchange_reduce(self.order[peer], buf, scratch, tag, combine)
    }

    fn sendrecv_reduce<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        acc: &mut [T],
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        self.inner
            .sendrecv_reduce(self.order[dest], send, self.order[src], acc, tag, combine)
    }
}
