//! The call check of a persistent collective, made once when it is set up (`Comm`'s `*_init`)
//! rather than by each start's collective: every rank must describe the same call.

use super::Local;
use crate::algorithms::check::{self, Call};
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::Kind;
use crate::op::Op;
use crate::select::Choice;

/// A persistent collective as its ranks agree on it: which collective and algorithm, on how
/// many elements of which type, at which root, with which op.
pub(crate) struct Setup<'o, T> {
    /// The collective's name, for messages.
    pub op: &'static str,
    /// The collective.
    pub kind: Collective,
    /// Elements per rank.
    pub len: usize,
    /// The root of a rooted collective.
    pub root: Option<usize>,
    /// The op of a reducing collective.
    pub combine: Option<&'o dyn Op<T>>,
}

impl Local {
    /// Checks that every rank sets up the same persistent collective `setup` with algorithm
    /// `alg` (its id: blocks are compared by each start's own check): the check of every
    /// collective, in its dissemination form, so that every rank returns the same verdict.
    pub(crate) fn agree_setup<T: 'static, A: Choice>(
        &self,
        setup: &Setup<'_, T>,
        alg: A,
    ) -> Result<()> {
        self.enter_call(setup.op)?;
        let tag = self.next_tag(Kind::Coll(setup.kind));
        let mut call = Call::of::<T, A>(setup.op, alg, setup.len);
        if let Some(root) = setup.root {
            call = call.at(root);
        }
        if let Some(op) = setup.combine {
            call = call.with_op(&op);
        }
        check::agree(&self.coll(setup.op), tag, &call, true)
    }
}
