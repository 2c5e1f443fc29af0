//! Cross-memory attach (`process_vm_readv`, Linux ≥ 3.2): one process of a node copies bytes
//! straight out of another's memory, one copy through the kernel instead of two through a
//! shared segment. The kernel allows it where the reader could `ptrace` the other process
//! (the same user, and Yama's `ptrace_scope` at 0, or a parent reading its child); the node
//! stage probes it once when a team is made and copies through the segment where it is
//! refused.

use std::io;

/// Copies `local.len()` bytes from address `remote` of process `pid` into `local`.
///
/// The kernel checks `remote..remote + local.len()` against the other process's mappings (an
/// address it does not map is `EFAULT`, never a fault here); what the bytes hold is the
/// caller's to agree with that process.
pub(crate) fn read(pid: u32, remote: u64, local: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < local.len() {
        let rest = local.len() - done;
        let mine = libc::iovec {
            iov_base: local[done..].as_mut_ptr().cast(),
            iov_len: rest,
        };
        let theirs = libc::iovec {
            iov_base: (remote as usize + done) as *mut libc::c_void,
            iov_len: rest,
        };
        // SAFETY: `mine` describes `rest` writable bytes of `local`; the kernel only reads
        // the other process's memory through `theirs` and reports what it cannot reach.
        let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &mine, 1, &theirs, 1, 0) };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_process_reads_its_own_memory_through_the_kernel() {
        let src: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let mut dst = vec![0u8; src.len() - 3];
        read(std::process::id(), src.as_ptr() as u64 + 3, &mut dst).unwrap();
        assert_eq!(dst, src[3..]);
        let e = read(std::process::id(), 8, &mut [0u8; 8]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
    }
}
